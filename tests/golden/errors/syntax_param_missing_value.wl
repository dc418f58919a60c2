param hosts =
param start = 2016-01-01T00:00:00Z
