print("pinstore: coming soon")
