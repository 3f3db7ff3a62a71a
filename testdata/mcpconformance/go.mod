module subakomcpconformance

go 1.26
