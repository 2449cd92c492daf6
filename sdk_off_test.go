//go:build !sdk

package main

// sdkTests: built without -tags sdk, cmd/gateway's tests of the official
// clients (openai-go, anthropic-sdk-go), whose compiling was most of a
// fresh clone's first go test ./..., were left out.
const sdkTests = false
