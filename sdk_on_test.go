//go:build sdk

package main

// sdkTests: built with -tags sdk, cmd/gateway's tests of the official
// clients (openai-go, anthropic-sdk-go) ran too.
const sdkTests = true
