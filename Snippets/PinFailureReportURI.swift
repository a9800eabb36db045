// snippet.hide
// The article "Pin failure reports" (PinStore). Compiled by `swift build`, never run.
import Foundation
import PinStore

let listURL = URL(string: "https://pins.example.net/list.json")!
let listKey = "BC3kV9OIDnMu...Nv+XE="
// snippet.show
var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: listKey)
configuration.reportURI = URL(string: "https://pin-reports.example.net/v1/report")
