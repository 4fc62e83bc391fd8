# The billing service in Python, on stubs generated from proto/ by grpcio-tools (docs/internal-clients.md).
import os

import grpc
from rms.v1 import common_pb2, resources_pb2, resources_pb2_grpc

channel = grpc.insecure_channel(os.environ.get("CORE_ADDR", "127.0.0.1:50051"))
resources = resources_pb2_grpc.ResourceServiceStub(channel)
call = {"metadata": [("authorization", "Bearer " + os.environ["BILLING_TOKEN"])], "timeout": 10}
tenant = common_pb2.Tenant(account_id=os.environ["ACCOUNT_ID"], livemode=False)

page = resources.ListResources(resources_pb2.ListResourcesRequest(tenant=tenant, limit=5), **call)
for resource in page.resources:
    print(resource.id, resource.name)
got = resources.GetResource(resources_pb2.GetResourceRequest(tenant=tenant, id=page.resources[0].id), **call)
print("read", got.resource.id, got.resource.name)
try:
    resources.CreateResource(resources_pb2.CreateResourceRequest(tenant=tenant, name="not allowed"), **call)
    raise SystemExit("core let a reader create")
except grpc.RpcError as refused:
    assert refused.code() == grpc.StatusCode.PERMISSION_DENIED, refused
    print("create refused:", refused.code().name)
channel.close()
