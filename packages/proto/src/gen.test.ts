import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const packageDir = new URL("..", import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), "rms-gen-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

describe("generated code", () => {
  it("is exactly what buf generate makes from proto/ (no stale or hand-edited files)", () => {
    execFileSync("buf", ["generate", "--template", "buf.gen.yaml", "--output", scratch], { cwd: packageDir, stdio: "pipe" });
    const fresh = join(scratch, "src/gen");
    const committed = join(packageDir, "src/gen");
    const freshFiles = listFiles(fresh)
      .map((f) => relative(fresh, f))
      .sort();
    expect(
      listFiles(committed)
        .map((f) => relative(committed, f))
        .sort(),
    ).toEqual(freshFiles);
    for (const file of freshFiles) {
      expect(readFileSync(join(committed, file), "utf8"), file).toBe(readFileSync(join(fresh, file), "utf8"));
    }
  });

  it("includes a descriptor set with comments that is exactly what scripts/descriptor-set.mjs makes from proto/", () => {
    const fresh = join(scratch, "descriptor-set.ts");
    execFileSync("node", ["scripts/descriptor-set.mjs", fresh], { cwd: packageDir, stdio: "pipe" });
    expect(readFileSync(join(packageDir, "src/descriptor-set.ts"), "utf8")).toBe(readFileSync(fresh, "utf8"));
  });

  it("exports every generated file through src/generated.ts, exactly as scripts/generated-index.mjs writes it", () => {
    const fresh = join(scratch, "generated.ts");
    execFileSync("node", ["scripts/generated-index.mjs", fresh], { cwd: packageDir, stdio: "pipe" });
    expect(readFileSync(join(packageDir, "src/generated.ts"), "utf8")).toBe(readFileSync(fresh, "utf8"));
  });

  it("cites only documents of this repository in the .proto comments (they reach the generated code and gRPC reflection)", () => {
    const protoDir = join(packageDir, "../../proto");
    const repo = join(packageDir, "../..");
    for (const file of listFiles(protoDir).filter((f) => f.endsWith(".proto"))) {
      const text = readFileSync(file, "utf8");
      // The contract lives beside the repository, not in it: a reader of the proto cannot open it.
      expect(text, relative(repo, file)).not.toMatch(/CONTRACT\.md|ARCHITECTURE\.md/);
      for (const [, cited] of text.matchAll(/\b(docs\/[\w./-]+\.md)/g))
        expect(statSync(join(repo, cited!)).isFile(), `${relative(repo, file)} cites ${cited}`).toBe(true);
    }
  });
});
