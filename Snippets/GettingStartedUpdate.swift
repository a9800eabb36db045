// snippet.hide
// The article "Getting started" (PinStore), "Update at start-up". Compiled by `swift build`,
// never run.
import Foundation
import PinStore

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
// snippet.show
let result = await store.update()
