"""The error helpers: code, ErrorInfo reason (domain ccm.provider.v1), RetryInfo."""
import unittest

import grpc

import ccm_provider_sdk as sdk

C = grpc.StatusCode


class ErrorsTest(unittest.TestCase):
    def check(self, error, code, reason="", retry_ms=None):
        st = error.to_status()
        self.assertEqual(st.code, code.value[0])
        self.assertEqual(sdk.error_reason(st), reason)
        self.assertEqual(sdk.retry_after_ms(st), retry_ms)

    def test_every_helper(self):
        self.check(sdk.instance_not_found("no vm"), C.NOT_FOUND, sdk.INSTANCE_NOT_FOUND)
        self.check(sdk.not_found("no lb"), C.NOT_FOUND)
        self.check(sdk.already_exists("x"), C.ALREADY_EXISTS)
        self.check(sdk.invalid_argument("x"), C.INVALID_ARGUMENT)
        self.check(sdk.rate_limited("slow down", 2500), C.RESOURCE_EXHAUSTED, sdk.RATE_LIMITED, 2500)
        self.check(sdk.retry("allocating", 1000), C.UNAVAILABLE, "", 1000)
        self.check(sdk.quota_exceeded("x"), C.RESOURCE_EXHAUSTED, sdk.QUOTA_EXCEEDED)
        self.check(sdk.implemented_elsewhere(), C.FAILED_PRECONDITION, sdk.IMPLEMENTED_ELSEWHERE)
        self.check(sdk.in_use("attached"), C.FAILED_PRECONDITION, sdk.IN_USE)
        self.check(sdk.cloud_unavailable("x"), C.UNAVAILABLE, sdk.CLOUD_API_ERROR)
        self.check(sdk.not_configured(), C.FAILED_PRECONDITION, sdk.NOT_CONFIGURED)
        self.check(sdk.not_implemented(), C.UNIMPLEMENTED)

    def test_deferred_carries_its_reason_and_retry(self):
        st = sdk.deferred("QuotaExhausted", "quota of 2 reached", 7000).to_status()
        self.check(sdk.deferred("QuotaExhausted", "x", 7000), C.UNAVAILABLE, sdk.DEFERRED, 7000)
        self.assertEqual(sdk.deferred_reason(st), "QuotaExhausted")
        self.assertIsNone(sdk.deferred_reason(sdk.retry("x", 1000).to_status()))
        with self.assertRaises(ValueError):
            sdk.deferred("quota exhausted!", "x", 1000)

    def test_details_carry_domain_metadata_and_exact_delay(self):
        st = sdk.ProviderError(C.UNAVAILABLE, "m", reason="CUSTOM", retry_after_ms=1234, metadata={"k": "v"}).to_status()
        self.assertEqual(st.message, "m")
        self.assertEqual([d.TypeName() for d in st.details], ["google.rpc.ErrorInfo", "google.rpc.RetryInfo"])
        from google.rpc import error_details_pb2
        info = error_details_pb2.ErrorInfo()
        st.details[0].Unpack(info)
        self.assertEqual((info.domain, info.reason, dict(info.metadata)), (sdk.ERROR_DOMAIN, "CUSTOM", {"k": "v"}))
        retry = error_details_pb2.RetryInfo()
        st.details[1].Unpack(retry)
        self.assertEqual((retry.retry_delay.seconds, retry.retry_delay.nanos), (1, 234_000_000))

    def test_status_proto_of_other_exceptions_is_internal(self):
        st = sdk.status_proto(ValueError("boom"))
        self.assertEqual((st.code, st.message), (C.INTERNAL.value[0], "boom"))
        self.assertEqual(sdk.status_proto(sdk.in_use("x")).code, C.FAILED_PRECONDITION.value[0])


if __name__ == "__main__":
    unittest.main()
