# tests of the super-kernel layer
