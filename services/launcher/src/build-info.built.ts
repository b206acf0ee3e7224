/** build-info.ts in the built JavaScript (scripts/build.ts takes a `.built.ts` file in its sibling's place). */
export const BUILT: boolean = true;
