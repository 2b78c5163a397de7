// Package tlstest writes throwaway certificates for tests: a self-signed
// certificate authority and, signed by it, a certificate valid for
// loopback (127.0.0.1, ::1 and localhost) that serves as a server's and as
// a client's. Nothing outside tests uses it.
package tlstest
