# drocli: installs the package and runs the main job (the GDRO synthetic figure of paper 000).
FROM python:3.11-slim
WORKDIR /drocli
COPY . .
RUN python -m pip install --no-cache-dir -e .
ENV MPLBACKEND=Agg
CMD ["sh", "-c", "drocli run experiments/gdro_synthetic.yaml -j 2 && drocli plot results/gdro_synthetic && drocli check results/gdro_synthetic"]
