// snippet.hide
// README.md, "Using the pins" (a pinned URLSession and its refusal). Compiled by `swift build`,
// never run.
#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore
import PinStoreNIO

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
let partnerCAFile = URL(fileURLWithPath: "/etc/partner/ca.pem")
_ = partnerCAFile
// snippet.show
let session = URLSession(configuration: .pinned(by: store))   // the setup (the server example above)
// A partner with a private CA: one TrustRoots value, accepted by every adapter.
// let session = URLSession(configuration: .pinned(by: store, trustRoots: try .anchors(contentsOf: partnerCAFile)))
do {
    let (data, _) = try await session.data(from: URL(string: "https://api.example.com/v1/items")!)
    // snippet.hide
    _ = data
    // snippet.show
} catch {
    // The refusal, whatever wrapped it (URLError here, OpenAPIRuntime's ClientError elsewhere).
    if let failure = PinningFailure(unwrapping: error) { print(failure.summary) }
}
// snippet.hide
#endif
