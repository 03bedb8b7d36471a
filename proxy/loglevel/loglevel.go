// Package loglevel holds the verbosity levels (klog's -v) the proxy command logs at, as data: every
// klog.V call of the proxy names one of these constants, and docs/operations.md's table of log levels is
// generated from Levels (hack/docgen). Logs are klog structured logs on stderr; errors and the lines of
// starting and stopping are logged at every level.
package loglevel

// The levels, each logging what the levels below it log and what its Level.Logs says.
const (
	// Setup is what the proxy derived from its environment when it started.
	Setup = 1
	// Unusual is a request that did not go as a plain forward would, and the release of the memory
	// startup took.
	Unusual = 2
	// PerRequest is one line per request served.
	PerRequest = 3
	// Debug is detail of single requests for debugging.
	Debug = 4
)

// Level is one verbosity level and what it adds to the logs.
type Level struct {
	// V is the level, -v=V.
	V int
	// Logs says what it adds.
	Logs string
}

// Levels are the levels the proxy logs at, from the lowest.
var Levels = []Level{
	{V: Setup, Logs: "What the proxy derived from its environment at start: the Go heap's limit, from the container's memory limit."},
	{V: Unusual, Logs: "Requests that did not go as a plain forward would: the backend unreachable or resetting a request's stream, " +
		"a backend watch that broke off (the client's ends cleanly) and a watch that could not be copied to its client, " +
		"a part of a merged cluster-wide list or watch that broke off, an answer the proxy made itself " +
		"(a response it could not translate, with the Status the client got), a write held while its namespace is migrated, " +
		"a conversion that failed (the object, the versions, the reference fields that did not resolve), an admission webhook call that failed, " +
		"and in-process conversion that could not read discovery, store a status write's conversion data or go on with a watch; " +
		"also the release of the memory startup took."},
	{V: PerRequest, Logs: "One line per request served: verb, path, class, HTTP status code and duration."},
	{V: Debug, Logs: "Clients that went away before their answer, backend error bodies that are no Status (OpenAPI), and each request converted in process."},
}
