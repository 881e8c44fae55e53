// Package sysmem allocates the tools' large particle arrays in huge pages
// where the system has them, committed in one call rather than one page
// fault at a time. core and format take the allocator as a hook
// (core.Config.Alloc, format.CloudReader.LoadParticles) and stay free of
// system calls.
package sysmem
