module github.com/dnslab/wanem

go 1.26.8
