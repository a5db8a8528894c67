-- wrk script for the write benchmarks: every request is a POST whose body and
-- content type come from the environment, so one script serves all of them.
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers["Content-Type"] = os.getenv("BENCH_CONTENT_TYPE")
