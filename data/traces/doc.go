// Package traces embeds the public traces allot is tested and benchmarked
// on, so a binary reads them from any working directory. The files are
// those of this folder, described (origin, licence, facts) in SOURCES.md;
// they are never edited.
//
// Open gives a built-in trace by its short name (Names lists them) as raw
// bytes; parsing belongs to the readers under internal/trace (azurellm for
// "azure-code" and "azure-conv", philly for "philly").
package traces
