import AssetPackTestSupport
import Testing

/// `CLI.run`'s cheap KDF: it adds `--scrypt-cost 10` only to a `pack` of a container at the default
/// cost without a key file, so the tests that choose a cost, a key file or zip run what they say.
@Suite struct CLIHelperTests {
    @Test func theTestHelperLowersOnlyADefaultPasswordCost() {
        let pack = ["pack", "src", "--output", "o", "--format", "container"]
        let cheap = ["pack", "--scrypt-cost", "10", "src", "--output", "o", "--format", "container"]
        #expect(CLI.withCheapKDF(pack) == cheap)
        #expect(
            CLI.withCheapKDF(["pack", "src", "--format=container"]) == [
                "pack", "--scrypt-cost", "10", "src", "--format=container",
            ])
        #expect(CLI.withCheapKDF(pack + ["--", "-odd-name"]) == cheap + ["--", "-odd-name"])
        for kept in [
            pack + ["--scrypt-cost", "14"], pack + ["--scrypt-cost=14"], pack + ["--key-file", "k"],
            ["pack", "src", "--output", "o", "--format", "zip"], ["pack", "src", "--", "--format", "container"],
            ["cat", "p", "--format", "container"],
        ] {
            #expect(CLI.withCheapKDF(kept) == kept)
        }
    }
}
