param a = 1
param b = "café"
