#!/usr/bin/env node
// Thin launcher so npm can link the `rms` bin before the TypeScript is built.
import "../dist/rms.js";
