import { pythonPackages } from "@rms/test-db/testkit";

/**
 * stripe-python 16.1.0 and what it imports, each wheel's sha256 pinned (charset_normalizer's pure-Python wheel, so
 * one list fits every CPython 3): the tests that drive stripe-python run it on every machine with python3 and pip,
 * CI's included, instead of skipping where nobody installed it by hand.
 */
const REQUIREMENTS = [
  "stripe==16.1.0 --hash=sha256:3798e07a0603c8923710414cd1942ae847ed43cebbf34c3258417c189711ea70",
  "requests==2.34.2 --hash=sha256:2a0d60c172f83ac6ab31e4554906c0f3b3588d37b5cb939b1c061f4907e278e0",
  "urllib3==2.8.0 --hash=sha256:0cf3cae568d36aa9576b28dfb35f11328f1cb974ca7647d9475ebb86c75ac6e3",
  "idna==3.20 --hash=sha256:ab7ae7122974553370f0bdb919e1a960b2cd1bc1ef0276416d896db81c14582c",
  "certifi==2026.10.19.post1 --hash=sha256:1324c476b4811eff41a8bc2122cd0bbd4d9c7234c725446d99ab1612b3a7fdd2",
  "charset_normalizer==3.5.3 --hash=sha256:96e268b0cbda016ac519513294fcd17032264085b600abaac58b93049477e132",
  "typing_extensions==4.16.0 --hash=sha256:481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8",
];

/**
 * A PYTHONPATH under which `import stripe` is stripe-python: `STRIPE_PYTHON_PATH` when set, else the pinned wheels
 * installed once into `<cache>/stripe-python-16.1.0`, outside the repository (@rms/test-db's `pythonPackages`).
 * Answers why not when python3 or pip or the registry is missing.
 */
export async function stripePython(env: NodeJS.ProcessEnv = process.env): Promise<{ path: string } | { unavailable: string }> {
  const given = env["STRIPE_PYTHON_PATH"];
  if (given) return { path: given };
  return pythonPackages(
    { label: "stripe-python 16.1.0", folder: "stripe-python-16.1.0", requirements: REQUIREMENTS, probe: "stripe/__init__.py", requireHashes: true },
    env,
  );
}
