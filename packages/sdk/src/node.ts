/** The Node build's entry: the SDK with Node's platform (node:https with `ca`, paths as files). */
import { nodePlatform } from "./node/platform.js";
import { usePlatform } from "./platform.js";

usePlatform(nodePlatform);

export * from "./index.js";
