// snippet.hide
// The article "Getting started" (PinStore), "Configure the store". Compiled by `swift build`,
// never run.
import Foundation
// snippet.show
import PinStore

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!,
    publicKey: "BC3kV9OIDnMu...Nv+XE=",
    identifier: "payments"))
