// replaced by the codegen sources
