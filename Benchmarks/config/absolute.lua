-- wrk script for scripts/benchmark: wrk has no proxy option, so point wrk at the proxy and send the
-- absolute-form request target a forward proxy expects.
wrk.method = "GET"
wrk.path = "http://127.0.0.1:@ORIGIN_PORT@/small"
wrk.headers["Host"] = "127.0.0.1:@ORIGIN_PORT@"
