"""A reference gRPC server in another implementation (Python grpcio), for
the gRPC transport's tests: the service below, with the reflection
service, on 127.0.0.1 (a free port).

    python grpc_server.py WORKDIR

Compiles the service with grpc_tools into WORKDIR (and writes its
descriptor set, imports included, to WORKDIR/echo.pb), then prints
"PORT <n>" on stdout once it serves, and serves until killed.

bench.Echo:
  - Say: answers the request's text; INVALID_ARGUMENT when the text is
    empty or `at` is unset (so a request wirebench encoded wrong fails);
  - Fail: always FAILED_PRECONDITION;
  - Count: server-streaming, `repeat` answers.
"""

import os
import sys
from concurrent import futures

PROTO = """syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message EchoRequest { string text = 1; int32 repeat = 2; google.protobuf.Timestamp at = 3; }
message EchoReply { string text = 1; }
service Echo {
  rpc Say(EchoRequest) returns (EchoReply);
  rpc Fail(EchoRequest) returns (EchoReply);
  rpc Count(EchoRequest) returns (stream EchoReply);
}
"""


def main():
    work = sys.argv[1]
    with open(os.path.join(work, "echo.proto"), "w") as f:
        f.write(PROTO)
    from grpc_tools import protoc
    import grpc_tools

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    rc = protoc.main([
        "protoc", f"-I{work}", f"-I{include}", f"--python_out={work}", f"--grpc_python_out={work}",
        f"--descriptor_set_out={os.path.join(work, 'echo.pb')}", "--include_imports",
        os.path.join(work, "echo.proto"),
    ])
    if rc != 0:
        sys.exit(f"protoc failed: {rc}")
    sys.path.insert(0, work)
    import grpc
    from grpc_reflection.v1alpha import reflection
    import echo_pb2
    import echo_pb2_grpc

    class Echo(echo_pb2_grpc.EchoServicer):
        def Say(self, request, context):
            if not request.text or not request.HasField("at"):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "text and at are required")
            return echo_pb2.EchoReply(text=request.text)

        def Fail(self, request, context):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "this method always fails")

        def Count(self, request, context):
            for i in range(request.repeat):
                yield echo_pb2.EchoReply(text=f"{request.text} {i}")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    echo_pb2_grpc.add_EchoServicer_to_server(Echo(), server)
    names = (echo_pb2.DESCRIPTOR.services_by_name["Echo"].full_name, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"PORT {port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
