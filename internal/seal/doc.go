// Package seal keeps small secrets encrypted at rest: the server seals a
// tenant's registry credential before it writes it to the store, with a
// key the store never sees (a file of the server's data directory, mode
// 0600), and opens it only to hand it to an agent.
//
// A Key is 32 random bytes; Seal is AES-256-GCM with a random 96-bit nonce
// per call, the nonce before the ciphertext, and additional data that
// binds the sealed value to where it is kept (the record's key), so that a
// sealed value copied under another tenant's or registry's name does not
// open. Open's and ParseKey's errors say what is wrong without quoting the
// secret. A key file is one line of 64 hex digits; LoadOrCreate makes one
// when there is none and refuses one that others may read.
package seal
