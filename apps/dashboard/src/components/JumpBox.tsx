import { useNavigate } from "@tanstack/react-router";
import { useState } from "react";
import { jumpTarget } from "../lib/jump";

/** The top bar's box that opens any object's page from its id (`res_`, `evt_`, `we_`, `job_`, `file_`, `req_`). */
export function JumpBox() {
  const navigate = useNavigate();
  const [text, setText] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  return (
    <form
      className="jump"
      aria-label="Open an object by its id"
      onSubmit={(e) => {
        e.preventDefault();
        if (text.trim() === "") return;
        const target = jumpTarget(text);
        if ("problem" in target) {
          setProblem(target.problem);
          return;
        }
        setProblem(null);
        setText("");
        if (target.to === "/keys") void navigate({ to: "/keys" });
        else void navigate({ to: target.to, params: { id: target.id } });
      }}
    >
      <label htmlFor="jump-id" className="sr-only">
        Go to an id
      </label>
      <input
        id="jump-id"
        value={text}
        placeholder="Go to id: evt_…, we_…, req_…"
        spellCheck={false}
        autoComplete="off"
        aria-invalid={problem ? true : undefined}
        aria-describedby={problem ? "jump-problem" : undefined}
        onChange={(e) => {
          setText(e.target.value);
          setProblem(null);
        }}
      />
      <button type="submit" className="small">
        Go
      </button>
      {problem && (
        <p id="jump-problem" className="jump-problem" role="alert">
          {problem}
        </p>
      )}
    </form>
  );
}
