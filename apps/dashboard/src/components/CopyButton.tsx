import { useState } from "react";

/**
 * Copies a value (a secret, a JSON body, a curl line) to the clipboard and says so beside the button (a status the
 * screen reader reads); the button keeps its words, so its name always holds what it shows. `name` is the button's
 * accessible name when the words alone are not enough ("Copy" beside several things): it begins with them.
 */
export function CopyButton({ value, label, name }: { value: string; label: string; name?: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  return (
    <span className="copy">
      <button
        type="button"
        className="secondary small"
        aria-label={name}
        onClick={() => {
          void (navigator.clipboard?.writeText(value) ?? Promise.reject(new Error("no clipboard"))).then(
            () => setState("copied"),
            () => setState("failed"),
          );
        }}
      >
        {label}
      </button>
      <span role="status" className="copy-status">
        {state === "copied" ? "Copied" : state === "failed" ? "Copying is not allowed here: select the text instead" : ""}
      </span>
    </span>
  );
}
