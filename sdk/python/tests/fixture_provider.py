"""A provider for test_serve.py, run as a child process like a host runs one."""
import os
import sys
import time

from ccm.provider.v1 import instances_pb2
from ccm_provider_sdk import Info, invalid_argument, main, rate_limited

print("printed before serve")  # Must not reach the host's stdout (the guard runs on import).


class Instances:
    def InstanceExists(self, request, context):
        name = request.node.name
        if name == "stray":
            print("a stray print")
            os.write(1, b"a stray write to fd 1\n")
        if name == "throttle":
            raise rate_limited("slow down", 2500)
        if name == "boom":
            raise ValueError("boom")
        if name == "slow":
            context.done.wait(60)  # Until a Shutdown or stop aborts the call.
            raise TimeoutError("aborted")
        return instances_pb2.InstanceExistsResponse(exists=True)


class Provider:
    info = Info(name="fixture.example.com", provider_name="fixture", vendor_version="9.9.9")
    instances = Instances()

    def configure(self, request, context):
        if request.cloud_config == b"bad":
            raise invalid_argument("cloud config is bad")

    def close(self):
        marker = os.environ.get("FIXTURE_CLOSED")
        if marker:
            with open(marker, "w") as f:
                f.write("closed")


if __name__ == "__main__":
    sys.stderr.write(f"fixture started {time.time()}\n")
    main(Provider())
