// snippet.hide
// The PinStoreNIO module overview. Compiled by `swift build`, never run. A pinned URLSession is
// Linux's (FoundationNetworking).
#if canImport(FoundationNetworking)
// snippet.show
import Foundation
import FoundationNetworking
import PinStore
import PinStoreNIO

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!,
    publicKey: "BC3kV9OIDnMu...Nv+XE="))
let session = URLSession(configuration: .pinned(by: store))
let (data, _) = try await session.data(from: URL(string: "https://api.example.com/v1/items")!)
// snippet.hide
#endif
