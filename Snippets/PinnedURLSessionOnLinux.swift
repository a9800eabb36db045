// snippet.hide
// The article "Pinning URLSession on Linux" (PinStoreNIO). Compiled by `swift build`, never
// run. A pinned URLSession is Linux's (FoundationNetworking).
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

do {
    let (data, response) = try await session.data(from: URL(string: "https://api.example.com/v1/items")!)
    print((response as? HTTPURLResponse)?.statusCode ?? 0, data.count)
} catch let error as URLError where error.code == .serverCertificateUntrusted {
    print(error.userInfo[NSUnderlyingErrorKey] as? PinningFailure as Any)
}
// snippet.hide
#endif
