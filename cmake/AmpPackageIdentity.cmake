# Who makes AMP Studio and where to find it: one place for the Debian packages (installer/), the
# AppStream metadata (resources/) and the man pages. Cache variables: whoever builds packages to
# hand out sets their own with -D. The homepage and address below are placeholders until the
# project publishes a home of its own; nothing at build or run time contacts them.
set(AMP_PACKAGE_HOMEPAGE "https://ampstudio.org" CACHE STRING "Homepage in the package and AppStream metadata")
set(AMP_PACKAGE_MAINTAINER "AMP Studio developers <packages@ampstudio.org>" CACHE STRING
    "Maintainer field of the Debian packages")
# The project has not chosen a licence yet: all rights reserved (debian/copyright says so).
set(AMP_PACKAGE_LICENSE_SPDX "LicenseRef-proprietary" CACHE STRING "SPDX licence of AMP Studio")
# The release this tree is: its date goes into the AppStream release and the changelog.
set(AMP_RELEASE_DATE "2026-11-23")
