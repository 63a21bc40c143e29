# tests of the kernels area
