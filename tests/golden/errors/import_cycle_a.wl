import "import_cycle_b.wl" as b
param a = 1
