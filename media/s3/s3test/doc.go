// Package s3test gives tests a fresh bucket on the loopback S3 server that
// .ci/run starts (versitygw; AGENTRY_TEST_S3_ENDPOINT, default
// http://127.0.0.1:7070), alone or behind a fault proxy. A test that cannot
// create its bucket fails, naming the server: it never skips.
package s3test
