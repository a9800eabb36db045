// snippet.hide
// README.md, "Using the pins" (AsyncHTTPClient), and the article "What the pinned client
// checks". Compiled by `swift build`, never run.
import Foundation

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
// snippet.show
import AsyncHTTPClient
import PinStore
import PinStoreAsyncHTTPClient

let client = try HTTPClient(pinnedBy: store)     // Linux and macOS: MultiThreadedEventLoopGroup.singleton
// a private CA, as for the other adapters: HTTPClient(pinnedBy: store, trustRoots: try .anchors(contentsOf: partnerCAFile))
let response = try await client.execute(HTTPClientRequest(url: "https://api.example.com/v1/items"), timeout: .seconds(30))
