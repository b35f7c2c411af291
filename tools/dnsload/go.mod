module github.com/dnslab/dnsload

go 1.26.8

require (
	github.com/miekg/dns v1.1.73
	golang.org/x/net v0.57.0
	golang.org/x/sys v0.47.0
)

require golang.org/x/text v0.40.0 // indirect
