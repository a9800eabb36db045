// snippet.hide
// The article "A list from a file" (PinStore). Compiled by `swift build`, never run.
import Foundation
import PinStore
import ServiceLifecycle

struct YourServer: Service { func run() async throws {} }
let server = YourServer()
let teamKey = "BC3kV9OIDnMu...Nv+XE="
// snippet.show
var configuration = PinStore.Configuration(
    serviceURL: URL(fileURLWithPath: "/etc/pinstore/list.json"),
    publicKey: teamKey,
    storageDirectory: URL(fileURLWithPath: "/var/lib/my-server/pinstore"))
configuration.keyDocumentURL = URL(fileURLWithPath: "/etc/pinstore/keys.json")   // if you rotate keys
let store = try PinStore(configuration: configuration)
// In the server's ServiceGroup, as for a downloaded list:
let services: [any Service] = [store, server]
