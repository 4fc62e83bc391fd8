// A billing service reading one account's resources through core (docs/internal-clients.md).
import { createCoreClient, RpcError } from "@rms/client";

const core = createCoreClient({ address: process.env.CORE_ADDR ?? "127.0.0.1:50051", token: process.env.BILLING_TOKEN });
const tenant = { accountId: process.env.ACCOUNT_ID ?? "", livemode: false };
try {
  const { resources } = await core.resources.listResources({ tenant, limit: 5 });
  for (const resource of resources) console.log(resource.id, resource.name);
  const { resource } = await core.resources.getResource({ tenant, id: resources[0]!.id });
  console.log("read", resource?.id, resource?.name);
  // Its entry lists two reads: anything else is refused, and a write changes nothing.
  await core.resources.createResource({ tenant, name: "not allowed" });
  throw new Error("core let a reader create");
} catch (error) {
  if (!(error instanceof RpcError) || error.code !== "method_not_allowed") throw error;
  console.log("create refused:", error.code);
} finally {
  core.close();
}
