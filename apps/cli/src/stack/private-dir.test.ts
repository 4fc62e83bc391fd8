import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { makePrivate } from "./private-dir.js";

const root = mkdtempSync(join(tmpdir(), "rms-private-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const mode = (path: string) => statSync(path).mode & 0o777;

it("tightens a data directory left open: directories 0700, files 0600", () => {
  const dir = join(root, "data");
  mkdirSync(join(dir, "db", "nested"), { recursive: true, mode: 0o755 });
  writeFileSync(join(dir, "admin-token"), "x", { mode: 0o644 });
  writeFileSync(join(dir, "db", "nested", "file"), "x", { mode: 0o666 });
  chmodSync(dir, 0o755);
  makePrivate(dir);
  expect([dir, join(dir, "db"), join(dir, "db", "nested")].map(mode)).toEqual([0o700, 0o700, 0o700]);
  expect([join(dir, "admin-token"), join(dir, "db", "nested", "file")].map(mode)).toEqual([0o600, 0o600]);
});

it("creates a missing directory as 0700", () => {
  makePrivate(join(root, "fresh"));
  expect(mode(join(root, "fresh"))).toBe(0o700);
});
