# dtype conversion kernels
