# tests of the runtime area
