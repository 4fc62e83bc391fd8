import { type ReactNode, useId, useState } from "react";

/**
 * A form kept out of the way until asked for ("New endpoint", "Filters"): a button that shows and hides what it
 * controls (`aria-expanded`, `aria-controls`), the two placed apart (the button in the page's header, the form under
 * it). Open at first when `initiallyOpen` says so (filters already in the URL). What it hides stays mounted: a form
 * keeps what was typed in it.
 */
export function useDisclosure(initiallyOpen = false) {
  const [open, setOpen] = useState(initiallyOpen);
  const id = useId();
  return {
    open,
    setOpen,
    button: (label: string, className = "secondary") => (
      <button type="button" className={className} aria-expanded={open} aria-controls={id} onClick={() => setOpen(!open)}>
        {label}
      </button>
    ),
    body: (children: ReactNode) => (
      <div id={id} hidden={!open}>
        {children}
      </div>
    ),
  };
}

/** A page's heading with its actions beside it ("New ...", "Filters"), wrapping under it on a phone. */
export function PageHeader({ title, crumbs, children }: { title: ReactNode; crumbs?: ReactNode; children?: ReactNode }) {
  return (
    <header className="page-header">
      {crumbs && <p className="crumbs">{crumbs}</p>}
      <div className="page-title">
        <h1>{title}</h1>
        {children && <div className="page-actions">{children}</div>}
      </div>
    </header>
  );
}
