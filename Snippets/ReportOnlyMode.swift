// snippet.hide
// The article "Report-only mode and domain configuration" (PinStore). Compiled by
// `swift build`, never run.
import Foundation
import PinStore

let listURL = URL(string: "https://pins.example.net/list.json")!
let listKey = "BC3kV9OIDnMu...Nv+XE="
let currentKey = PinIdentity.leafKey(spkiSHA256Base64: "9Bjf0EyzJ2qVhNXH6IuplC6glEuU0Xf5WcNQy5Fz9jM=")
let backupKey = PinIdentity.leafKey(spkiSHA256Base64: "bF3pC9Ou1AQa1XdqgjqbrX9WhmHy6vHD5RvPbbPgYXg=")
// snippet.show
var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: listKey)
configuration.enforcement = .reportOnly          // every pin failure of every host
// configuration.enforcement = .listReportOnly   // the list's (and fallback's) pins, and hosts without pins
var policy = PinPolicy(domain: "cdn.example.com", pins: [currentKey, backupKey])
policy.reportOnly = true                         // this policy only (or PinPolicy(..., reportOnly: true))
