param hosts = 10
param start = 2016-01-01T00:00:00Z
param hosts = 20
