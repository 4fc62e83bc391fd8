import { z } from "zod";
import { describe, expect, it } from "vitest";
import { ConfigError, parseEnvironment } from "./environment.js";
import { address, isLoopbackAddress, logLevel, port, positiveInt, token } from "./values.js";

const schema = z.object({
  PORT: port(8443),
  CORE_ADDR: address("127.0.0.1:50051"),
  RMS_ADMIN_TOKEN: token(),
  RATE: positiveInt().optional(),
  LOG_LEVEL: logLevel(),
});
const parse = (env: Record<string, string | undefined>) => parseEnvironment(schema, env);
const TOKEN = "0123456789abcdef";

describe("parseEnvironment with the shared rules", () => {
  it("applies defaults, converts values and treats empty ones as unset", () => {
    expect(parse({ RMS_ADMIN_TOKEN: TOKEN, PORT: "", CORE_ADDR: "[::1]:50051", RATE: "25" })).toEqual({
      PORT: 8443,
      CORE_ADDR: "[::1]:50051",
      RMS_ADMIN_TOKEN: TOKEN,
      RATE: 25,
      LOG_LEVEL: "info",
    });
    expect(parse({ RMS_ADMIN_TOKEN: TOKEN, PORT: "0" }).PORT).toBe(0);
  });

  it.each([
    [{}, "RMS_ADMIN_TOKEN is required"],
    [{ RMS_ADMIN_TOKEN: "" }, "RMS_ADMIN_TOKEN is required"],
    [{ RMS_ADMIN_TOKEN: "short" }, "RMS_ADMIN_TOKEN must be at least 16 characters"],
    [{ RMS_ADMIN_TOKEN: TOKEN, PORT: "65536" }, "PORT must be a port number"],
    [{ RMS_ADMIN_TOKEN: TOKEN, PORT: "http" }, "PORT must be a port number"],
    [{ RMS_ADMIN_TOKEN: TOKEN, CORE_ADDR: "50051" }, "CORE_ADDR must be host:port"],
    [{ RMS_ADMIN_TOKEN: TOKEN, CORE_ADDR: "a b:1" }, "CORE_ADDR must be host:port"],
    [{ RMS_ADMIN_TOKEN: TOKEN, RATE: "1.5" }, "RATE must be a positive integer"],
    [{ RMS_ADMIN_TOKEN: TOKEN, LOG_LEVEL: "loud" }, "LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent"],
  ])("refuses %o with one line naming the variable", (env, message) => {
    expect(() => parse(env)).toThrow(new ConfigError(message));
  });

  it("knows loopback addresses", () => {
    for (const yes of ["127.0.0.1:1", "127.8.9.10:50051", "localhost:1", "[::1]:1"]) expect(isLoopbackAddress(yes)).toBe(true);
    for (const no of ["10.0.0.1:1", "[::2]:1", "example.com:1", "0.0.0.0:1"]) expect(isLoopbackAddress(no)).toBe(false);
  });
});
