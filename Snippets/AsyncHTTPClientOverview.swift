// snippet.hide
// The PinStoreAsyncHTTPClient module overview. Compiled by `swift build`, never run.
import Foundation

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
// snippet.show
import AsyncHTTPClient
import PinStore
import PinStoreAsyncHTTPClient

let client = try HTTPClient(pinnedBy: store)
defer { Task { try? await client.shutdown() } }
let response = try await client.execute(HTTPClientRequest(url: "https://api.example.com/v1/items"),
                                        timeout: .seconds(30))
