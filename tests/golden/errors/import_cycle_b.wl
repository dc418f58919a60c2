import "import_cycle_a.wl" as a
param b = 2
