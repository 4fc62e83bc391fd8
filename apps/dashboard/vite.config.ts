import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Static files for the gateway to serve at /dashboard/ (apps/gateway/src/http/dashboard.ts): hashed assets under
// assets/, no inline script or style anywhere (the page's CSP is `default-src 'self'`).
export default defineConfig(({ command }) => {
  // A build is what ships, whoever runs it: vite keeps a NODE_ENV it inherits (a test runner's `test`, when a test runs
  // `npm start`), which would build React's development code into dist.
  if (command === "build") process.env.NODE_ENV = "production";
  return {
    base: "/dashboard/",
    plugins: [react()],
    build: {
      outDir: "dist",
      emptyOutDir: true,
      assetsDir: "assets",
      sourcemap: false,
      // Vite's module-preload helper would add an inline polyfill script otherwise.
      modulePreload: { polyfill: false },
      assetsInlineLimit: 0,
      target: "es2022",
    },
  };
});
