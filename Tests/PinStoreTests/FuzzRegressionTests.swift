import Foundation
import PinStore
import PinStoreTestSupport
import Testing

/// Inputs the fuzz targets (`Fuzz/`) found crashing, kept as tests: each must now be answered
/// with a typed error (or a result), never a trap. The files are in `Fixtures/fuzz/`, named for
/// the target and what is special about them.
@Suite struct FuzzRegressionTests {
    @Test func anAndroidConfigWithInvalidUTF8InAnElementNameIsRefused() throws {
        // network_security_config.xml with `<pin-set>` mutated to `<pin-s\u{E5}t>` (a lone
        // Latin-1 byte) and a `</pin>` cut into `</pin"?>`: found by the network-security-config target.
        let data = try TestResources.fixture("fuzz/network-security-config-invalid-utf8-name.xml")
        #expect(throws: PinPolicyImportError.self) { _ = try PinPolicyImport.networkSecurityConfig(data) }
    }
}

extension FuzzRegressionTests {
    @Test func anAndroidConfigWithAProcessingInstructionWithoutDataIsRefused() throws {
        // network_security_config.xml whose declaration was mutated to `<?xm?>`: FoundationXML
        // crashed on it (strlen(NULL)). Found by the network-security-config target.
        let data = try TestResources.fixture("fuzz/network-security-config-processing-instruction-without-data.xml")
        let error = #expect(throws: PinPolicyImportError.self) { _ = try PinPolicyImport.networkSecurityConfig(data) }
        #expect(error?.location == "line 1")
    }

    @Test func aMutatedBinaryInfoPlistIsAnsweredWithoutCrashing() throws {
        // A binary Info.plist with mutated object bytes: PropertyListSerialization's bridging
        // crashed on it. Found by the info-plist target. Whether it imports is not the point.
        let data = try TestResources.fixture("fuzz/info-plist-binary-crash.plist")
        _ = try? PinPolicyImport.infoPlist(data)
        _ = try? PinPolicyImport.transportSecurityExceptions(infoPlist: data)
    }
}

extension FuzzRegressionTests {
    @Test(.timeLimit(.minutes(10))) func aBinaryPlistWhoseObjectsReferenceEachOtherIsRefusedPromptly() throws {
        // 750 bytes of binary plist whose object references unfold into billions of values: the
        // decode ran for minutes and grew past 1 GB. Found by the info-plist target.
        // The refusal is the event: a decode that unfolds the references runs for minutes and
        // is caught by the time limit (a bound of 5 s on the elapsed time measured the machine).
        let data = try TestResources.fixture("fuzz/info-plist-binary-shared-references.plist")
        let error = #expect(throws: PinPolicyImportError.self) { _ = try PinPolicyImport.infoPlist(data) }
        #expect(error?.location == "plist")
    }

    @Test func aPlistWithMoreValuesThanAnyInfoPlistIsRefused() throws {
        let values = String(repeating: "<true/>", count: 100_001)
        let plist = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>NSPinnedDomains</key><array>"# + values + "</array></dict></plist>"
        let error = #expect(throws: PinPolicyImportError.self) { _ = try PinPolicyImport.infoPlist(Data(plist.utf8)) }
        #expect(error?.reason.contains("100000 values") == true)
    }

    @Test func aPlistNestedDeeperThanAnyInfoPlistIsRefused() throws {
        let deep = String(repeating: "<array>", count: 200) + String(repeating: "</array>", count: 200)
        let plist = #"<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>NSPinnedDomains</key>"# + deep + "</dict></plist>"
        #expect(throws: PinPolicyImportError.self) { _ = try PinPolicyImport.infoPlist(Data(plist.utf8)) }
    }
}
