import Foundation
@testable import PinStore
import PinStoreSigning

/// Builds signed static lists in tests (the committed fixtures cover the fixed cases).
enum TestLists {
    static func signedStatic(_ entries: [FingerprintEntry], key: P256PrivateKey) throws -> Data {
        var items: [[String: Any]] = []
        for entry in entries {
            var item: [String: Any] = [
                "name": entry.name,
                "fingerprint": entry.fingerprint.base64EncodedString(),
                "expires": entry.expires,
                "signature": try key.signature(for: entry.signedBytes).base64EncodedString(),
            ]
            if entry.depth != 0 { item["depth"] = entry.depth }
            items.append(item)
        }
        return try JSONSerialization.data(withJSONObject: ["fingerprints": items], options: [.sortedKeys])
    }
}
