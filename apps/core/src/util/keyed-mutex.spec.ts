import { describe, expect, it } from "vitest";
import { KeyedMutex } from "./keyed-mutex.js";

const tick = () => new Promise((r) => setTimeout(r, 1));

describe("KeyedMutex", () => {
  it("runs tasks of one key one at a time, in order", async () => {
    const mutex = new KeyedMutex();
    const log: string[] = [];
    let running = 0;
    await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        mutex.run("a", async () => {
          running++;
          expect(running).toBe(1);
          log.push(`start${i}`);
          await tick();
          log.push(`end${i}`);
          running--;
        }),
      ),
    );
    expect(log).toEqual(Array.from({ length: 5 }, (_, i) => [`start${i}`, `end${i}`]).flat());
    expect(mutex.size).toBe(0);
  });

  it("runs different keys concurrently and survives a failing task", async () => {
    const mutex = new KeyedMutex();
    let concurrent = 0;
    let peak = 0;
    const task = async () => {
      peak = Math.max(peak, ++concurrent);
      await tick();
      concurrent--;
    };
    await Promise.all([mutex.run("a", task), mutex.run("b", task)]);
    expect(peak).toBe(2);
    await expect(mutex.run("a", async () => Promise.reject(new Error("x")))).rejects.toThrow("x");
    await expect(mutex.run("a", async () => 42)).resolves.toBe(42);
  });
});
