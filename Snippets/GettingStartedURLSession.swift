// snippet.hide
// The article "Getting started" (PinStore), "Make pinned calls". Compiled by `swift build`,
// never run.
#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
// snippet.show
import PinStoreNIO

let session = URLSession(configuration: .pinned(by: store))
let (data, response) = try await session.data(from: URL(string: "https://api.example.com/v1/items")!)
// snippet.hide
#endif
